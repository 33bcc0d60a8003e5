defmodule EchoMQ.Worker.Registration do
  @moduledoc """
  A worker's entry in the worker registry (PROTOCOL.md §11.3, 1.4): every
  beat, `HSET emq:worker:<id>` with its ten fields, `PEXPIRE` three beats,
  `ZADD emq:workers <beat> <id>`; at a graceful stop `DEL` and `ZREM`. The
  id is `<host>:<pid>:<ULID>`, new to each worker. A worker that may not
  write the keys goes on without them, saying so once.
  """
  require Logger

  alias EchoMQ.{Keyspace, Protocol, Redis}

  defstruct [:id, :host, :queue, :concurrency, :beat, :started]

  @doc "A registration for a worker of `queue`, beating every `beat` ms (10 to 60000)."
  def new(queue, concurrency, beat) do
    {:ok, host} = :inet.gethostname()
    beat = beat |> max(10) |> min(60_000)

    %__MODULE__{
      id: "#{host}:#{System.pid()}:#{String.trim_leading(EchoMQ.Id.mint(), "JOB_")}",
      host: to_string(host),
      queue: queue,
      concurrency: concurrency,
      beat: beat,
      started: System.system_time(:millisecond)
    }
  end

  @doc "Write the entry, with the jobs it holds a lease on now."
  def beat(conn, %__MODULE__{} = r, running) do
    now = Integer.to_string(System.system_time(:millisecond))
    key = Keyspace.worker_key(r.id)
    ttl = Integer.to_string(3 * r.beat)

    fields = [
      "host",
      r.host,
      "pid",
      System.pid(),
      "queues",
      :jiffy.encode([r.queue]),
      "concurrency",
      Integer.to_string(r.concurrency),
      "version",
      "echomq-elixir 0.1.0",
      "protocol",
      Protocol.version_text(),
      "started",
      Integer.to_string(r.started),
      "beat",
      now,
      "ttl",
      ttl,
      "running",
      :jiffy.encode(running)
    ]

    answers =
      Redis.pipeline(conn, [["HSET", key | fields], ["PEXPIRE", key, ttl], ["ZADD", Keyspace.workers(), now, r.id]])

    case Enum.find(answers, &match?({:error, _}, &1)) do
      nil -> :ok
      error -> Logger.debug("the worker registry was not written: #{inspect(error)}")
    end
  end

  @doc "Leave the registry (a graceful stop)."
  def leave(conn, %__MODULE__{id: id}) do
    Redis.pipeline(conn, [["DEL", Keyspace.worker_key(id)], ["ZREM", Keyspace.workers(), id]])
    :ok
  end
end
