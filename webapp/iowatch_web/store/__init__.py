"""The store read as a whole, above the apps that keep it: not a Django app.

`values.sample_values` is the one reader of group-level values (results'
raw samples, or the summaries retention left for a run it summarised);
`sides` turns stored runs into bundle-shaped sides for iowatch.judging (the
runs a side takes are iowatch.judging.sides.SideQuery's rule). Both read the
results and retention apps' models, so they live above both: the results app
imports neither retention nor this package, and retention imports results
only (its models point at runs and cells)."""
