"""MetaSchedule autotuning for CPU kernels: `mlcx tune` writes a database, `mlcx compile
--tuning-db DB` applies it.

Tasks are the kernels the CPU pipeline leaves unscheduled after operator fusion (FuseOps /
FuseTIR); mlcx's hand-written kernels (`tirx.is_scheduled`) are never tasks. With
`--kernels all` the hand-written linear kernels are switched off during extraction, so the
linear layers are tuned in their plain tensor-expression form.

The rule that keeps tuning and compiling in step: the database directory holds
`mlcx-tuning.json` with `hand_linears`, and a compile that uses the database builds its module
the same way (hand-written linears on or off), otherwise no record would ever match.

Every kernel has a dynamic token count. MetaSchedule measures only static shapes, so a task
is the kernel specialized to one token (the decode step, which is what tok/s measures); the
best record's trace is replayed on the dynamic kernel when compiling (a loop of unknown
extent keeps its extent in the outer tile).
"""
