# The two commands of the README. Each sets up what is missing first.
.PHONY: run test test-heavy setup

# Set up, load the studies' published numbers, and serve the dashboard on the
# embedded SQLite store.
run:
	./scripts/run.sh

# Set up, start PostgreSQL, and run the whole test suite (PostgreSQL, then the
# store and API tests again on SQLite).
test:
	./scripts/test.sh

# The checks at their issue's own scale, beyond the suite's budget (tests marked
# heavy: two 100,000-cell runs served to four readers), on both stores.
test-heavy:
	./scripts/test.sh --heavy

setup:
	./scripts/setup.sh
