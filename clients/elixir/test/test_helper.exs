# Each module starts the redis-servers it needs (EchoMQ.Test.Server) and
# stops them when it ends. A busy 2-core machine runs them two at a time.
exclude =
  if System.get_env("ECHOMQ_PYTHON") do
    []
  else
    IO.puts("test_helper: ECHOMQ_PYTHON is not set: the interop tests with the Python speaker are excluded")
    [:python]
  end

ExUnit.start(max_cases: 2, timeout: 120_000, exclude: exclude, capture_log: true)
