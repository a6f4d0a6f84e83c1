# The two commands of the README. Each sets up what is missing first.
.PHONY: run test setup

# Set up, load the studies' published numbers, and serve the dashboard on the
# embedded SQLite store.
run:
	./scripts/run.sh

# Set up, start PostgreSQL, and run the whole test suite (PostgreSQL, then the
# store and API tests again on SQLite).
test:
	./scripts/test.sh

setup:
	./scripts/setup.sh
