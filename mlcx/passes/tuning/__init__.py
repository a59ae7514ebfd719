"""MetaSchedule autotuning for CPU kernels: `mlcx tune` (mlcx.compile.tune) writes a database,
`mlcx compile --tuning-db DB` applies it.

Tasks are the kernels the CPU pipeline leaves unscheduled after operator fusion (FuseOps /
FuseTIR); mlcx's hand-written kernels (`tirx.is_scheduled`) are never tasks. With
`--linear-kernels tvm` no linear layer gets a hand-written kernel, so the linears are tuned in
their plain tensor-expression form.

The rule that keeps tuning and compiling in step: the database directory holds
`mlcx-tuning.json` with the `linear_kernels` it was tuned with, and a compile that uses the
database builds its module the same way (records.resolve_linear_kernels), otherwise no record
would ever match.

Every kernel has a dynamic token count. MetaSchedule measures only static shapes, so a task
is the kernel specialized to one token (the decode step, which is what tok/s measures); the
best record's trace is replayed on the dynamic kernel when compiling (a loop of unknown
extent keeps its extent in the outer tile).
"""
