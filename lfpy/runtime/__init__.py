"""The deterministic reactor runtime, one concept per module (as reactor-cpp):

- `tag`: superdense time (Tag = time in ns, microstep), units (SEC, MSEC, ...), FOREVER/NEVER;
- `events`: the event queue of future tags (a heap);
- `ports`, `actions`, `timers`, `modes`: what reaction bodies touch;
- `reaction`: a reaction bound to its reactor object and arguments;
- `reactor`: the base class of generated reactor classes (`self.check_deadline()`, ...);
- `interfaces`: what the objects a scheduler runs may ask of it (`Schedule`, `Runtime`,
  `Interruptible`), the only view of the scheduler below it;
- `plan`: what a scheduler is built from (`Plan`);
- `scheduler`: advances time, runs each tag's reactions level by level with a level runner (inline,
  a worker pool, or federated);
- `signals`: Ctrl-C and SIGTERM request a stop (shutdown reactions run); a second one ends at once;
- `failure`: how a failure in user code is reported, at the `.lf` line that raised;
- `api`: the names reaction bodies see (`lf`, units, `lf_print`, ...);
- `environment`: binds an elaborated program (`lfpy.graph`) to all of the above for one run, and
  holds its state for checkpoints (`checkpoint`: the file);
- `federation/`: federated programs with their federates in processes, a package of one module per
  job (its messages, transport, processes, the coordinator's and the federate's sides, ...);
- `cluster`: those processes in Ray actors on the nodes of a cluster (`lfrl run --cluster`).

The modules form a stack (docs/runtime.md); the threading contract is written at the top of
scheduler.py and ports.py.
"""
