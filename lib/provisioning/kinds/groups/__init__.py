"""Consumer groups as desired state: each group's own configs set (IncrementalAlterConfigs on
the group resource) and read back; an `absent` group deleted when it has no members."""

# What the kinds registered after consumer groups may import of them: the reading of each
# group's type, state and members (an offset reset is sent only to a group with none).
OFFERS = ("requests", "tasks")
