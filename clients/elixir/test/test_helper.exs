# Each module starts the redis-servers it needs (EchoMQ.Test.Server) and
# stops them when it ends. A busy 2-core machine runs them two at a time.
ExUnit.start(max_cases: 2, timeout: 120_000)
