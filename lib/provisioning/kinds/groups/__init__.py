"""Consumer groups as desired state: each group's own configs set (IncrementalAlterConfigs on
the group resource) and read back; an `absent` group deleted when it has no members."""

# What the kinds registered after consumer groups may import of them: the reading of each
# group's type, state and members (whether a group has any), and the groups' conf (the
# groups the job never changes).
OFFERS = ("conf", "requests", "tasks")
