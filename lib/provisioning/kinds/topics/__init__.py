"""Topics: created (validateOnly first, with the configs the broker returns, KIP-525),
altered in place, deleted by topic id, adopted (`import`), and judged live by `check`
with their usage."""

# What the kinds registered after topics may import of them (each a module of this folder):
# the topics' slice of a run's state (their plan, their deletions), the run's topics in
# scope, the configs a topic will have once altered, and the result rows of the topics a
# phase never reached (`plan.without_answer`).
OFFERS = ("state", "phases", "policies.alter", "plan")
