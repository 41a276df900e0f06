"""Search: one retrieval used by the chat engine, the API and the benchmarks (rankings fused, scored,
thresholded), and what refines it: conversation rewrite, expansion, feedback, reranking, widening,
hygiene and the result cache."""
