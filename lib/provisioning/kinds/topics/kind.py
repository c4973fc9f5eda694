"""The topics kind, as `provisioning.registry` registers it."""

from provisioning.kinds import Kind
from provisioning.kinds.topics.cli import CLI
from provisioning.kinds.topics.conf import SECTION
from provisioning.kinds.topics.run import RUN
from provisioning.kinds.topics.view import VIEW

KIND = Kind(name="topics", conf=SECTION, run=RUN, view=VIEW, cli=CLI)
