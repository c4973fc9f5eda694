"""The quotas kind, as `provisioning.registry` registers it."""

from provisioning.kinds import Kind
from provisioning.kinds.quotas.cli import CLI
from provisioning.kinds.quotas.conf import SECTION
from provisioning.kinds.quotas.run import RUN
from provisioning.kinds.quotas.view import VIEW

KIND = Kind(name="quotas", conf=SECTION, run=RUN, view=VIEW, cli=CLI)
