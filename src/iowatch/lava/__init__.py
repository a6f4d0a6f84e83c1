"""iowatch on a LAVA lab (docs/lab.md, "A LAVA lab").

A LAVA lab is a group of hardware-inventory.yml whose hosts are board classes
(iowatch.inventory.LavaLab, LavaBoard). For each boot iowatch makes one LAVA
job definition (definition: deploy the variant's kernel and a root filesystem
with iowatch's runner, boot, run the cells, upload the bundle), checks it with
LAVA's own schema, submits it through LAVA's REST API (client) and follows it
to the end (follow): an infrastructure failure is tried again on another board
of the type, a job failure becomes the run's failure with LAVA's log linked.
No Django here: the controller, Jenkins and the agent call it.
"""
