"""What an algorithm is and how a run is kept, below everything else of rl_baselines: the BaseRLObject contract
(base), the algorithm and action kinds, the hyperparameter spec, the registry, the run folder's file names, the
training state and checkpoints."""
