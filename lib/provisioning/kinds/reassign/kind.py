"""The reassign kind, as `provisioning.registry` registers it."""

from provisioning.kinds import Kind
from provisioning.kinds.reassign.cli import CLI
from provisioning.kinds.reassign.conf import SECTION
from provisioning.kinds.reassign.run import RUN
from provisioning.kinds.reassign.view import VIEW

KIND = Kind(name="reassign", conf=SECTION, run=RUN, view=VIEW, cli=CLI)
