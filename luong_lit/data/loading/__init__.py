"""Loading for Lightning: batches and their sampler, the resumable loader, the datamodule, and a
trained model's own data (its test sets, read as training read them)."""
