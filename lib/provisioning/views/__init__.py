"""What people and machines read: the plan as text, saved plan files, the report, and
`check`'s violations and their trend.

Views read results (`provisioning.results`) and the job's tables; they never import
the run, so `report` starts without the Kafka stack.
"""
