"""Knowledge bases in the API: knowledge bases, documents and the ingestion jobs that fill them."""
