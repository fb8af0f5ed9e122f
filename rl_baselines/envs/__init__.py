"""The envs as an algorithm trains on them: the vectorised envs and their normalisation (factory), the wrappers, and
the frozen SRL encoder in front of the agent (srl_encoder)."""
