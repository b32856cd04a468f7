"""Learned schedulers.

This subpackage will hold training and evaluation of stable-baselines3 agents
(MaskablePPO, PPO, DQN, behaviour cloning) on ``mpsched/MultipathDeadline-v0``, the SB3
adapter over the native vector environment, feature extractors and shipped checkpoints.
"""
