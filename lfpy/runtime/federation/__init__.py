"""Federated programs in processes: every federate (each top-level instance of a `federated
reactor`, each member of a top-level bank its own) runs its reactions in an OS process of its own,
so that reactions holding the GIL run in parallel; the results are those of the same program
written as a `main reactor` (docs/federation.md).

Centralized coordination, with one schedule: lfrl's process (the coordinator) keeps the scheduler
of the whole program and hosts the first federate (or none, `lfrl run --coordinator-only`: then
federate 0 is an empty one, and the program's federates are 1..); at each level of a tag it sends every other
federate with reactions at that level one message and applies their answers in federate order.
Every process builds the whole program (the same generated module and graph), so ports and actions
have the same number (`slot`) everywhere; a federate initialises only its own reactors and runs only
its own reactions. A value that only reactions of its own federate read stays there: the
coordinator learns only that the port is present (`messages.NotSent`), unless it traces ports
(LFPY_TRACE).

One module per job, each importing only those above it in this list:

- `messages`: every message between the coordinator and a federate's process, with its layout, and
  the order they come in (the start-up sequence);
- `transport`: `Channel`, what carries messages one way, and its transports (rings in shared
  memory, pipes, TCP);
- `partition`: the program's graph split among the federates, and the numbering of ports, actions
  and modes that every process shares;
- `processes`: starting a federate's process (`launch`), talking to it (`StartedFederate.channels`),
  ending it (`abandon`, `reap`);
- `forwarding`: what federates print, whole lines; a federate elsewhere forwards it to the
  coordinator;
- `transient`: transient federates, which leave and join while the others run;
- `server`: a federate's side, in its process (`serve`, `FederateServer`, `FederateScheduler`);
- `coordinator`: the coordinator's side, in lfrl's process (`Federation`, and `FederatedRunner`, the level
  runner of the program's scheduler).

Their entry points are outside the runtime: lfpy.federate is a federate's process (it builds the
program and calls `server.serve`), lfpy.build starts the federates and runs the coordinator, and
the Ray cluster's launcher (lfpy/runtime/cluster.py) starts federates in Ray actors instead.

The package's `__init__` imports nothing: import the module that holds a name.
"""
