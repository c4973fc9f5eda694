"""Dev tooling: a local KRaft broker (`devkafka`) and a local Spark Connect server
(`sparkconnect`), started by `make kafka-up`, `make connect-up` and `make run`, and by the
tests and the benchmarks. Neither ships: they are in neither spark-submit.sh's zips nor the
wheel."""
