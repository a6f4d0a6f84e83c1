"""LKP-tests (intel/lkp-tests) as a harness and as a history source.

- jobs: a study's workload as LKP's atomic job (fio-basic or fsmark), or why it cannot be one;
- mapping: LKP's stat names (fio.write_bw_MBps, ...) onto iowatch's metric table;
- result_root: read an LKP result root (job.yaml, env.yaml, stats.json or matrix.json);
- harness: run one repetition through the real `lkp run` on a declared device;
- importer: existing result roots as result bundles (`iowatch import-lkp`).

LKP is GPL-2.0 and is called, never copied: LKP_SRC (or --lkp-src) names a
checkout, /opt/lkp-tests on lab hosts (the Ansible common role clones it).
"""
