"""The users kind, as `provisioning.registry` registers it."""

from provisioning.kinds import Kind
from provisioning.kinds.users.cli import CLI
from provisioning.kinds.users.conf import SECTION
from provisioning.kinds.users.run import RUN
from provisioning.kinds.users.view import VIEW

KIND = Kind(name="users", conf=SECTION, run=RUN, view=VIEW, cli=CLI)
