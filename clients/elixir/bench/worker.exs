# The Elixir worker's jobs/s at concurrency 10, beside the Python worker's,
# on the same redis-server, Lua and Native: JOBS no-op jobs enqueued
# (ENQUEUEMANY), then timed from the worker's start to the last one done;
# the median of ROUNDS. Run from clients/elixir:
#
#   ECHOMQ_MODULE=… [ECHOMQ_PYTHON=…] MIX_ENV=test mix run bench/worker.exs
alias EchoMQ.Test.Server

jobs = String.to_integer(System.get_env("JOBS", "10000"))
rounds = String.to_integer(System.get_env("ROUNDS", "3"))

median = fn list -> list |> Enum.sort() |> Enum.at(div(length(list), 2)) end

elixir_round = fn server, via ->
  {:ok, conn} = EchoMQ.Redis.open(Server.redis(server))
  queue = EchoMQ.Test.unique_queue("bench")

  for chunk <- Enum.chunk_every(1..jobs, 1000) do
    {:ok, _} = EchoMQ.Jobs.enqueue_many(conn, queue, Enum.map(chunk, fn _ -> {EchoMQ.Id.mint(), "x"} end), via: via)
  end

  done = EchoMQ.Keyspace.queue_key(queue, "done")
  started = System.monotonic_time(:microsecond)
  opts = [queue: queue, redis: Server.redis(server), via: via, concurrency: 10, handler: fn _ -> :ok end]
  {:ok, sup} = Supervisor.start_link([{EchoMQ.Worker, opts}], strategy: :one_for_one)
  EchoMQ.Test.eventually(fn -> EchoMQ.Redis.query(conn, ["ZCARD", done]) == {:ok, "#{jobs}"} end, 300_000)
  elapsed = System.monotonic_time(:microsecond) - started
  Supervisor.stop(sup)
  EchoMQ.Redis.close(conn)
  round(jobs * 1_000_000 / elapsed)
end

python_round = fn server, kind ->
  case System.get_env("ECHOMQ_PYTHON") do
    nil ->
      nil

    python ->
      env = [{"ECHOMQ_URL", Server.url(server)}, {"ECHOMQ_VIA", "#{kind}"}]

      {out, 0} =
        System.cmd(python, ["bench/python_worker.py", EchoMQ.Test.unique_queue("bench-py"), "#{jobs}"], env: env)

      out |> String.trim() |> String.to_integer()
  end
end

for kind <- [:lua, :native] do
  server = Server.start(kind)
  via = if kind == :lua, do: EchoMQ.Connector, else: EchoMQ.Connector.Native
  {:ok, conn} = EchoMQ.Redis.open(Server.redis(server))
  {:ok, ^via} = EchoMQ.Connector.detect(conn)
  elixir = for _ <- 1..rounds, do: elixir_round.(server, via)
  python = for _ <- 1..rounds, do: python_round.(server, kind)

  IO.puts(
    "#{kind}: elixir c10 #{median.(elixir)} jobs/s #{inspect(elixir)}; python c10 #{inspect(median.(python))} jobs/s #{inspect(python)}"
  )

  Server.stop(server)
end
