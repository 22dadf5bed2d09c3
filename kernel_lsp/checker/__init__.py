"""The checker (the referee): one file's stages, run in a worker process that imports torch. Each stage is
a subpackage: problem/ (load the linked problem), compile/ (capture launches, compile for targets),
verify/ (plan inputs, run, judge; evidence/), measure/ (time against the baselines on a GPU)."""
