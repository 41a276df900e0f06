"""What an operator runs the server with: metrics (:mod:`.metrics`), readiness (:mod:`.readiness`)."""
