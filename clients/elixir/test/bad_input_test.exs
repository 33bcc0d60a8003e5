defmodule EchoMQ.BadInputTest do
  @moduledoc """
  Bad input a host can see is refused before anything is sent: each call
  below raises `EchoMQ.InvalidInput` (the seed's guard, a FunctionClauseError,
  for an id or payload that is no binary), the server runs no transition,
  and the queue's keyspace stays as it was.
  """
  use ExUnit.Case, async: true
  use EchoMQ.Test.Executors

  alias EchoMQ.{Id, InvalidInput, Jobs}

  @big String.duplicate("x", 1_048_577)

  defp refused_before_sending(ctx, exception, call) do
    before = {transitions_sent(ctx.conn), keyspace(ctx.conn, ctx.queue)}
    assert_raise exception, call
    assert {transitions_sent(ctx.conn), keyspace(ctx.conn, ctx.queue)} == before
  end

  both "enqueue refuses a bad queue name, payload or option, and sends nothing", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    {:ok, :enqueued} = Jobs.enqueue(conn, queue, Id.mint(), "already there", via: via)
    id = Id.mint()

    for bad <- ["", "a{b", "a}b", "a" <> <<0>> <> "b", String.duplicate("q", 256), :emails] do
      refused_before_sending(ctx, InvalidInput, fn -> Jobs.enqueue(conn, bad, id, "p", via: via) end)
    end

    for opts <- [
          [priority: 2_147_483_648],
          [priority: 1.5],
          [delay: -1],
          [delay: 10, at: 10],
          [attempts: -1],
          [backoff: 10, backoff_exp: 10],
          [timeout: 0],
          [unique: "k"],
          [unique_for: 1000],
          [unique: "", unique_for: 1000],
          [unique: "k", unique_for: 1000, unique_done: :yes],
          [headers: %{"n" => 1}],
          [headers: %{}],
          [keys: :seed, priority: 3],
          [keys: :three],
          [colour: "blue"]
        ] do
      refused_before_sending(ctx, InvalidInput, fn -> Jobs.enqueue(conn, queue, id, "p", [via: via] ++ opts) end)
    end

    refused_before_sending(ctx, InvalidInput, fn -> Jobs.enqueue(conn, queue, id, @big, via: via) end)
    refused_before_sending(ctx, FunctionClauseError, fn -> Jobs.enqueue(conn, queue, id, %{not: "bytes"}, via: via) end)
    refused_before_sending(ctx, FunctionClauseError, fn -> Jobs.enqueue(conn, queue, :id, "p", via: via) end)
  end

  both "enqueue_many, cancel, inspect, result, retry and stats refuse bad input, and send nothing", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    id = Id.mint()
    refused_before_sending(ctx, InvalidInput, fn -> Jobs.enqueue_many(conn, queue, [], via: via) end)
    refused_before_sending(ctx, InvalidInput, fn -> Jobs.enqueue_many(conn, queue, [{id, "ok"}, {id}], via: via) end)

    refused_before_sending(ctx, InvalidInput, fn ->
      Jobs.enqueue_many(conn, queue, [{id, "ok"}, {Id.mint(), @big}], via: via)
    end)

    refused_before_sending(ctx, InvalidInput, fn -> Jobs.enqueue_many(conn, "a{b", [{id, "ok"}], via: via) end)
    refused_before_sending(ctx, InvalidInput, fn -> Jobs.stats(conn, "a{b", via: via) end)

    for call <- [&Jobs.cancel/4, &Jobs.inspect/4, &Jobs.result/4, &Jobs.retry/4] do
      refused_before_sending(ctx, InvalidInput, fn -> call.(conn, "}", id, via: via) end)
      refused_before_sending(ctx, InvalidInput, fn -> call.(conn, queue, 42, via: via) end)
      refused_before_sending(ctx, InvalidInput, fn -> call.(conn, queue, id, via: via, bogus: true) end)
    end
  end

  both "schedule_every refuses a bad name, period or missed word, and sends nothing", ctx do
    %{conn: conn, via: via, queue: queue} = ctx
    refused_before_sending(ctx, InvalidInput, fn -> Jobs.schedule_every(conn, queue, "", 1000, "p", via: via) end)
    refused_before_sending(ctx, InvalidInput, fn -> Jobs.schedule_every(conn, queue, "s", 0, "p", via: via) end)

    refused_before_sending(ctx, InvalidInput, fn ->
      Jobs.schedule_every(conn, queue, "s", 1000, "p", via: via, missed: "all:0")
    end)

    refused_before_sending(ctx, InvalidInput, fn -> Jobs.schedule_every(conn, "a{b", "s", 1000, "p", via: via) end)
    refused_before_sending(ctx, InvalidInput, fn -> Jobs.schedule_every(conn, queue, "s", 1000, @big, via: via) end)
  end

  both "a worker refuses a bad queue, handler or lease before it starts", ctx do
    redis = EchoMQ.Test.Server.redis(ctx.server)
    ok = fn _ -> :ok end

    refused_before_sending(ctx, InvalidInput, fn ->
      EchoMQ.Worker.start_link(queue: "a{b", handler: ok, redis: redis)
    end)

    refused_before_sending(ctx, InvalidInput, fn ->
      EchoMQ.Worker.start_link(queue: ctx.queue, handler: fn -> :ok end, redis: redis)
    end)

    refused_before_sending(ctx, InvalidInput, fn ->
      EchoMQ.Worker.start_link(queue: ctx.queue, handler: ok, redis: redis, lease: 0)
    end)

    for bad <- [idle_wait: 0, upkeep: 0, timeout: 0, grace: -1, concurrency: 0, max_attempts: -1] do
      refused_before_sending(ctx, InvalidInput, fn ->
        EchoMQ.Worker.start_link([queue: ctx.queue, handler: ok, redis: redis] ++ [bad])
      end)
    end
  end
end
