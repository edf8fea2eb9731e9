"""`python -m jetstream_cli`: the same program as the `jetstream` console script."""

from .app import main

if __name__ == "__main__":
    main()
