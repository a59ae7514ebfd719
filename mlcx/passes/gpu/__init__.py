"""Relax rewrites for GPU targets: mlcx's GPU kernels (mlcx.kernels.gpu) swapped into a model."""
