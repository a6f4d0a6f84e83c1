"""`iowatch agent`: the loop that works one lab host's jobs from the server
(confirmations, bisects, nightlies), booting each commit on the host with the
kernel role. loop: the turn; hosts: the host it drives (Ansible and ssh, or
recorded bundles); bisect and confirm: the two kinds of job."""
