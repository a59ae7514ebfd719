"""Structured output: what a request's output must match (`Constraint`: JSON object or schema,
regex, grammar), constraints read from files, their compilation by llguidance into one matcher
per sequence, and the token masks applied to a step's constrained logits rows."""
