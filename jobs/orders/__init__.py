"""Logic of the orders pipeline (`python -m jobs.orders_pipeline`), kept out of the job.

- `generator`: a deterministic, realistic sample of order events (with a small
  share of deliberately bad records) and what a correct pipeline must make of it;
- `streams`: the JetStream streams the pipeline needs, and publishing the sample;
- `transforms`: parse, validate, enrich, dead-letter, clean copy, windowed revenue
  (Spark DataFrame functions, the same for streaming and batch);
- `report`: progress lines while the queries run, the summary table and its checks.
"""
