"""The offset resets kind, as `provisioning.registry` registers it."""

from provisioning.kinds import Kind
from provisioning.kinds.offsets.cli import CLI
from provisioning.kinds.offsets.conf import SECTION
from provisioning.kinds.offsets.run import RUN
from provisioning.kinds.offsets.view import VIEW

KIND = Kind(name="offsets", conf=SECTION, run=RUN, view=VIEW, cli=CLI)
