"""compose-model-batch-run.

The composition function that runs a batch of OpenAI requests on spare GPUs of the fleet or through a ModelService.
"""
