"""The acls kind, as `provisioning.registry` registers it."""

from provisioning.kinds import Kind
from provisioning.kinds.acls.cli import CLI
from provisioning.kinds.acls.conf import SECTION
from provisioning.kinds.acls.run import RUN
from provisioning.kinds.acls.view import VIEW

KIND = Kind(name="acls", conf=SECTION, run=RUN, view=VIEW, cli=CLI)
