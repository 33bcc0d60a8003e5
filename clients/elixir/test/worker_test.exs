defmodule EchoMQ.WorkerTest do
  use ExUnit.Case, async: true
  use EchoMQ.Test.Executors

  alias EchoMQ.{Id, Jobs, Keyspace, Redis}

  # A worker under a supervisor of the test's own, stopped (gracefully) at the end.
  defp start_worker(ctx, opts) do
    opts = Keyword.merge([queue: ctx.queue, redis: EchoMQ.Test.Server.redis(ctx.server), via: ctx.via], opts)
    {:ok, sup} = Supervisor.start_link([{EchoMQ.Worker, opts}], strategy: :one_for_one)
    Process.unlink(sup)
    on_exit(fn -> if Process.alive?(sup), do: Supervisor.stop(sup, :normal, 60_000) end)
    sup
  end

  defp info(ctx, id) do
    {:ok, info} = Jobs.inspect(ctx.conn, ctx.queue, id, via: ctx.via)
    info
  end

  defp wait_state(ctx, id, state, timeout \\ 30_000) do
    eventually(fn -> (i = info(ctx, id)).state == state && i end, timeout, "job #{id} #{state}")
  end

  both "a supervised worker runs the jobs and keeps their results", ctx do
    ids =
      for n <- 1..20,
          do: Id.mint() |> tap(&({:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, &1, "#{n}", via: ctx.via)))

    start_worker(ctx, handler: fn job -> {:ok, "twice " <> String.duplicate(job.payload, 2)} end, concurrency: 4)

    for {id, n} <- Enum.with_index(ids, 1) do
      done = wait_state(ctx, id, "done")
      assert done.attempts == 1 and done.result == "twice #{n}#{n}"
    end
  end

  both "a failing job is retried by its own policy, then dies with its error", ctx do
    id = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, id, "bad", via: ctx.via, attempts: 3, backoff: 10)
    plain = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, plain, "raise", via: ctx.via)

    start_worker(ctx,
      max_attempts: 2,
      backoff: 10,
      handler: fn
        %{payload: "bad"} -> {:error, "no good"}
        %{payload: "raise"} -> raise ArgumentError, "elixir says no"
      end
    )

    dead = wait_state(ctx, id, "dead")
    assert dead.attempts == 3 and dead.error == "no good"
    # No policy of its own: the worker's max_attempts (2), the exception as its error.
    dead = wait_state(ctx, plain, "dead")
    assert dead.attempts == 2
    assert dead.error =~ "** (ArgumentError) elixir says no"
  end

  both "a lease is renewed while the handler runs past it", ctx do
    id = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, id, "slow", via: ctx.via)
    start_worker(ctx, lease: 600, handler: fn _ -> Process.sleep(2_000) && {:ok, "slow but mine"} end)
    done = wait_state(ctx, id, "done")
    assert done.attempts == 1 and done.result == "slow but mine"
  end

  both "a cancelled job's handler is stopped and its result thrown away", ctx do
    test = self()
    id = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, id, "cancel me", via: ctx.via)

    start_worker(ctx,
      lease: 600,
      handler: fn _ ->
        send(test, {:running, self()})
        Process.sleep(60_000)
        {:ok, "never"}
      end
    )

    assert_receive {:running, handler}, 30_000
    ref = Process.monitor(handler)
    assert Jobs.cancel(ctx.conn, ctx.queue, id, via: ctx.via) == {:ok, :cancelled}
    # The next renewal is fenced (EMQFENCE): the handler is killed.
    assert_receive {:DOWN, ^ref, :process, ^handler, _}, 30_000
    assert %{state: "cancelled", result: nil} = info(ctx, id)
  end

  both "a graceful stop releases the running job and spends no attempt", ctx do
    test = self()
    id = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, id, "long", via: ctx.via)

    sup = start_worker(ctx, grace: 200, handler: fn _ -> send(test, :running) && Process.sleep(60_000) && :ok end)

    assert_receive :running, 30_000
    :ok = Supervisor.stop(sup, :normal, 60_000)
    released = info(ctx, id)
    # Back to pending at once; its max attempts (the worker's 5) grew by one (REFUND).
    assert released.state == "pending" and released.attempts == 1
    assert released.policy == %EchoMQ.Policy{attempts: 6}
    assert Redis.query(ctx.conn, ["ZCARD", Keyspace.workers()]) == {:ok, "0"}
  end

  both "the job's TIMEOUT stops its handler and fails it", ctx do
    id = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, id, "stuck", via: ctx.via, timeout: 200, attempts: 1)
    start_worker(ctx, handler: fn _ -> Process.sleep(60_000) && :ok end)
    dead = wait_state(ctx, id, "dead")
    assert dead.error == "timed out after 200 ms"
  end

  both "a deferred job waits without spending its attempt", ctx do
    id = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, id, "later", via: ctx.via)

    start_worker(ctx,
      handler: fn
        %{token: 1} -> {:defer, 50}
        %{token: 2} -> {:ok, "now"}
      end
    )

    done = wait_state(ctx, id, "done")
    assert done.attempts == 2 and done.result == "now" and done.policy == %EchoMQ.Policy{attempts: 6}
  end

  both "upkeep reaps an expired lease, fences its holder, and promotes due jobs", ctx do
    id = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, id, "orphan", via: ctx.via)
    # A holder with a 1 ms lease: it dies (its lease runs out), the worker's upkeep reaps it.
    {:ok, [[^id, 1, "orphan"]]} = ctx.via.eval(ctx.conn, :claim, Keyspace.keys(:claim, ctx.queue), ["1", "COUNT", "1"])
    delayed = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, delayed, "due soon", via: ctx.via, delay: 300)
    start_worker(ctx, handler: fn job -> {:ok, "ran " <> job.payload} end)

    assert %{attempts: 2, result: "ran orphan"} = wait_state(ctx, id, "done")
    assert %{attempts: 1, result: "ran due soon"} = wait_state(ctx, delayed, "done")
    stale = ctx.via.eval(ctx.conn, :ack, Keyspace.keys(:ack, ctx.queue, job: id), [id, "1"])
    assert {:error, {:server, "EMQFENCE token does not hold the lease"}} = stale
  end

  both "the sweep tells a parent of children that never came or ended unlinked", ctx do
    %{conn: conn, via: via, queue: q} = ctx
    {parent, lost, unlinked} = {Id.mint(), Id.mint(), Id.mint()}
    children = ["{#{q}}#{lost}", "ignore", "{#{q}}#{unlinked}", "ignore"]

    {:ok, [1, _incarnation]} =
      via.eval(conn, :flow, Keyspace.keys(:flow, q, job: parent), [parent, "parent", "2" | children])

    # The producer died: one child was never enqueued, one was enqueued without its link.
    {:ok, :enqueued} = Jobs.enqueue(conn, q, unlinked, "child", via: via)
    {:ok, [[^unlinked, 1, "child"]]} = via.eval(conn, :claim, Keyspace.keys(:claim, q), ["60000", "COUNT", "1"])
    {:ok, 1} = via.eval(conn, :ack, Keyspace.keys(:ack, q, job: unlinked), [unlinked, "1", "RESULT", "ran child"])
    {:ok, _} = Redis.query(conn, ["ZADD", Keyspace.queue_key(q, "waiting"), "XX", "1", parent])
    start_worker(ctx, upkeep: 50, handler: fn job -> {:ok, "ran " <> job.payload} end)

    assert %{result: "ran parent"} = wait_state(ctx, parent, "done")
    {:ok, [_, "0" | found]} = via.eval(conn, :children, Keyspace.keys(:children, q, job: parent), [parent])
    assert Enum.sort(found) == Enum.sort([["{#{q}}#{lost}", "gone", nil], ["{#{q}}#{unlinked}", "done", "ran child"]])
  end

  both "the gate's word is obeyed: a queue's concurrency limit, then a pause and a resume", ctx do
    %{conn: conn, via: via, queue: q} = ctx
    config = Keyspace.keys(:config, q)
    {:ok, _} = via.eval(conn, :config, config, ["CONCURRENCY", "1"])
    ids = for n <- 1..6, do: Id.mint() |> tap(&({:ok, :enqueued} = Jobs.enqueue(conn, q, &1, "#{n}", via: via)))
    counter = :counters.new(2, [])

    handler = fn job ->
      :counters.add(counter, 1, 1)
      :counters.put(counter, 2, max(:counters.get(counter, 2), :counters.get(counter, 1)))
      Process.sleep(20)
      :counters.sub(counter, 1, 1)
      {:ok, job.payload}
    end

    start_worker(ctx, concurrency: 4, handler: handler)
    for id <- ids, do: wait_state(ctx, id, "done")
    # Four slots, but the queue lets one job be active at a time, for every worker.
    assert :counters.get(counter, 2) == 1

    {:ok, [1 | _]} = via.eval(conn, :config, config, ["PAUSED", "1", "CONCURRENCY", "0"])
    held = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(conn, q, held, "held", via: via)
    # A resume wakes the waiting claim at once (§9), whichever executor resumed.
    {:ok, [0 | _]} = via.eval(conn, :config, config, ["PAUSED", "0"])
    assert %{result: "held"} = wait_state(ctx, held, "done")
  end

  both "a worker refuses a queue another major of the protocol wrote", ctx do
    Process.flag(:trap_exit, true)
    {:ok, _} = Redis.query(ctx.conn, ["HSET", Keyspace.queue_key(ctx.queue, "config"), "protocol", "2.0"])
    opts = [queue: ctx.queue, redis: EchoMQ.Test.Server.redis(ctx.server), handler: fn _ -> :ok end]
    own = EchoMQ.Protocol.version_text()
    assert EchoMQ.Worker.start_link(opts) == {:error, {:other_major, "2.0", own}}
    # A later minor of this major is read as this one (§12).
    {:ok, _} = Redis.query(ctx.conn, ["HSET", Keyspace.queue_key(ctx.queue, "config"), "protocol", "1.99"])
    {:ok, worker} = EchoMQ.Worker.start_link(opts ++ [grace: 100])
    GenServer.stop(worker)
  end

  both "a worker registers itself and its queue", ctx do
    test = self()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, Id.mint(), "held", via: ctx.via)

    sup =
      start_worker(ctx, beat: 50, grace: 100, handler: fn _ -> send(test, :running) && Process.sleep(60_000) && :ok end)

    assert_receive :running, 30_000
    {:ok, score} = Redis.query(ctx.conn, ["ZSCORE", Keyspace.registry(), ctx.queue])
    assert score != nil

    entry =
      eventually(fn ->
        {:ok, [id | _]} = Redis.query(ctx.conn, ["ZRANGE", Keyspace.workers(), "0", "0", "REV"])
        {:ok, fields} = Redis.query(ctx.conn, ["HGETALL", Keyspace.worker_key(id)])
        found = fields |> Enum.chunk_every(2) |> Map.new(fn [k, v] -> {k, v} end)
        found["running"] not in [nil, "[]"] && found
      end)

    assert entry["queues"] == :jiffy.encode([ctx.queue]) and entry["protocol"] == EchoMQ.Protocol.version_text()
    assert [%{"queue" => q, "token" => 1}] = :jiffy.decode(entry["running"], [:return_maps])
    assert q == ctx.queue
    :ok = Supervisor.stop(sup, :normal, 60_000)
  end
end
