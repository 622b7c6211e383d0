"""Training an EAGLE3 draft with NVIDIA Model Optimizer in its own virtualenv: train_draft, export_untrained."""
