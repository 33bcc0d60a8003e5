defmodule EchoMQ do
  @moduledoc """
  EchoMQ for Elixir: the seed's own host. A job queue whose state lives in
  Redis, spoken as PROTOCOL.md's versioned protocol (1.6) beside the Rust
  host and the Python speaker, on the same queues, by the Lua scripts or
  the native module.

      {:ok, conn} = EchoMQ.Redis.open(port: 6379)
      {:ok, via} = EchoMQ.Connector.detect(conn)
      {:ok, :enqueued} = EchoMQ.Jobs.enqueue(conn, "emails", EchoMQ.Id.mint(), "hi", via: via)

      children = [
        {EchoMQ.Worker, queue: "emails", redis: [port: 6379], concurrency: 10,
         handler: fn %EchoMQ.Job{payload: p} -> {:ok, "sent " <> p} end}
      ]

      Supervisor.start_link(children, strategy: :one_for_one)

  # Layout

  - `EchoMQ.Jobs`: producing and reading, as the seed writes it
    (`enqueue/5`), with `enqueue_many`, `cancel`, `inspect`, `result`,
    `schedule_every`;
  - `EchoMQ.Worker`: runs a handler on a queue's jobs under a supervisor
    (`EchoMQ.Worker.Claims` claims, `EchoMQ.Worker.Registration` keeps
    its entry in the worker registry); `EchoMQ.Job` is what a handler gets;
  - `EchoMQ.Upkeep`: the duties of §11.3, run beside every worker;
  - `EchoMQ.Connector` (Lua, `EVALSHA`) and `EchoMQ.Connector.Native`
    (`EMQ.*`): how a transition reaches the server; `EchoMQ.Reply` types
    its reply; `EchoMQ.Redis` is the connection (Debian's eredis);
  - `EchoMQ.Keyspace`: every key, built in one place; `EchoMQ.Id`: branded
    ids; `EchoMQ.Args`: arguments checked before sending;
    `EchoMQ.InvalidInput`: what a bad one raises;
  - `EchoMQ.Protocol`: the version, limits, transitions and scripts, read
    from the repository at compile time (`EchoMQ.Protocol.Source`);
  - `EchoMQ.Policy`, `EchoMQ.JobInfo`, `EchoMQ.Schedule`: what the
    protocol stores beside a job, read and written.
  """
end
