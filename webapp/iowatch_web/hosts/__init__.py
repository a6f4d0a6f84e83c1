"""What each lab host is doing: the agents' heartbeats, the hosts' current
states and recent phase changes, and the give-back of a job whose host went
silent (docs/lab.md, "What each host is doing")."""
