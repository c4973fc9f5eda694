"""The groups kind, as `provisioning.registry` registers it."""

from provisioning.kinds import Kind
from provisioning.kinds.groups.cli import CLI
from provisioning.kinds.groups.conf import SECTION
from provisioning.kinds.groups.run import RUN
from provisioning.kinds.groups.view import VIEW

KIND = Kind(name="groups", conf=SECTION, run=RUN, view=VIEW, cli=CLI)
