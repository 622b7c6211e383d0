"""Offline prediction of vLLM's n-gram speculative decoding from recorded greedy requests."""
