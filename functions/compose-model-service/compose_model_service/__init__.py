"""compose-model-service: the composition function that composes the HTTPRoute that exposes a model behind the inference gateway."""
