"""Gymnasium's CarRacing (Box2D) behind the SRLGymEnv interface."""
