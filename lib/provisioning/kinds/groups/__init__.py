"""Consumer groups as desired state: each group's own configs set (IncrementalAlterConfigs on
the group resource) and read back; an `absent` group deleted when it has no members."""
