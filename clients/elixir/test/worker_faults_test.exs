defmodule EchoMQ.WorkerFaultsTest do
  @moduledoc "The faults a worker must survive: bad answers, stops mid-run, refused calls."
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

  defp worker(sup), do: sup |> Supervisor.which_children() |> hd() |> elem(1)

  defp info(ctx, id) do
    {:ok, info} = Jobs.inspect(ctx.conn, ctx.queue, id, via: ctx.via)
    info
  end

  defp wait_state(ctx, id, state, timeout) do
    eventually(fn -> (i = info(ctx, id)).state == state && i end, timeout, "job #{id} #{state}")
  end

  defp serve_suspends do
    receive do
      {op, pid, from, ref} ->
        apply(:erlang, op, [pid])
        send(from, ref)
        serve_suspends()
    end
  end

  defp suspend(suspender, op, pid) do
    ref = make_ref()
    send(suspender, {op, pid, self(), ref})
    receive do: (^ref -> :ok)
  end

  defp enqueue(ctx, payload, opts \\ []) do
    id = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, id, payload, [via: ctx.via] ++ opts)
    id
  end

  both "a bad defer fails its job, and the worker goes on", ctx do
    answers = %{"negative" => {:defer, -1}, "float" => {:defer, 1.5}, "huge" => {:defer, 1_000_000_000_000}}
    ids = for {payload, _} <- answers, into: %{}, do: {payload, enqueue(ctx, payload, attempts: 1)}
    sup = start_worker(ctx, grace: 100, handler: fn job -> answers[job.payload] end)
    pid = worker(sup)

    for {payload, id} <- ids do
      dead = wait_state(ctx, id, "dead", 10_000)
      assert dead.attempts == 1
      assert dead.error =~ "#{inspect(answers[payload])} is not an answer"
    end

    # The same worker, never restarted.
    assert worker(sup) == pid
  end

  both "a stop mid-run keeps renewing leases through the grace", ctx do
    test = self()
    slow = enqueue(ctx, "4000")
    quick = enqueue(ctx, "1500")

    handler = fn job ->
      send(test, {:running, job.id})
      Process.sleep(String.to_integer(job.payload))
      {:ok, "ran " <> job.payload}
    end

    sup = start_worker(ctx, lease: 1_000, grace: 5_000, concurrency: 2, handler: handler)
    assert_receive {:running, ^slow}, 30_000
    assert_receive {:running, ^quick}, 30_000
    # Within the grace: the quick job ends (acked then, not at the end), the
    # slow one runs past four leases, renewed all along.
    :ok = Supervisor.stop(sup, :normal, 60_000)
    assert %{state: "done", attempts: 1, result: "ran 4000"} = info(ctx, slow)
    assert %{state: "done", attempts: 1, result: "ran 1500"} = info(ctx, quick)
    refute_received {:running, _}
  end

  both "a stop releases the jobs of a claim in flight", ctx do
    test = self()

    sup =
      start_worker(ctx,
        concurrency: 1,
        lease: 60_000,
        grace: 100,
        idle_wait: 200,
        handler: fn _ -> send(test, :ran) && :ok end
      )

    worker = worker(sup)
    claims = :sys.get_state(worker).claims
    go = make_ref()
    # One process suspends the claims process and resumes it (only the
    # suspender may), for the hook in the worker and for the test.
    suspender = spawn_link(&serve_suspends/0)

    # In the worker: as it reads a claim's reply, the claims process is
    # suspended, so the claim that reply asks for waits; then the worker
    # waits too, until told to go on.
    hook = fn
      :armed, {:in, {:claimed, _}}, _ ->
        suspend(suspender, :suspend_process, claims)
        :holding

      :holding, {:noreply, %{claiming: true}}, _ ->
        send(test, :held)
        receive do: (^go -> :done)

      :holding, {:noreply, _}, _ ->
        suspend(suspender, :resume_process, claims)
        :armed

      hold, _, _ ->
        hold
    end

    :ok = :sys.install(worker, {hook, :armed})
    assert_receive :held, 30_000
    id = enqueue(ctx, "taken in flight")
    stopping = Task.async(fn -> Supervisor.stop(sup, :normal, 60_000) end)
    mailbox = fn -> worker |> Process.info(:messages) |> elem(1) end
    eventually(fn -> Enum.any?(mailbox.(), &match?({:EXIT, _, _}, &1)) end, 30_000, "the stop in the mailbox")
    # The claim runs now, on the server, its reply behind the stop.
    suspend(suspender, :resume_process, claims)
    wait_state(ctx, id, "active", 30_000)
    eventually(fn -> Enum.any?(mailbox.(), &match?({:claimed, {:ok, [_ | _]}}, &1)) end, 30_000, "the reply")
    send(worker, go)
    :ok = Task.await(stopping, 60_000)

    # Released (REFUND), not left active for REAP to spend its attempt.
    released = info(ctx, id)
    assert released.state == "pending" and released.attempts == 1
    assert released.policy == %EchoMQ.Policy{attempts: 6}
    refute_received :ran
  end

  both "a refused ACKMANY is tried again, then an ACK a job", ctx do
    test = self()
    bad = enqueue(ctx, "bad record")
    good = enqueue(ctx, "good")

    handler = fn job ->
      send(test, {:running, job.id, self()})
      receive do: (:go -> {:ok, "ran " <> job.payload})
    end

    sup = start_worker(ctx, concurrency: 2, lease: 60_000, handler: handler)
    worker = worker(sup)
    assert_receive {:running, ^bad, bad_handler}, 30_000
    assert_receive {:running, ^good, good_handler}, 30_000
    # A record of the wrong type refuses the whole ACKMANY (EMQTYPE).
    {:ok, _} = Redis.query(ctx.conn, ["DEL", Keyspace.job_key(ctx.queue, bad)])
    {:ok, _} = Redis.query(ctx.conn, ["SET", Keyspace.job_key(ctx.queue, bad), "not a hash"])

    # Both answers in the worker's mailbox before it reads either: one ACKMANY for both.
    :ok = :sys.suspend(worker)
    send(bad_handler, :go)
    send(good_handler, :go)
    answers = fn -> worker |> Process.info(:messages) |> elem(1) |> Enum.count(&match?({_, {:ack, _}}, &1)) end
    eventually(fn -> answers.() == 2 end, 30_000, "both answers")
    :ok = :sys.resume(worker)

    assert %{attempts: 1, result: "ran good"} = wait_state(ctx, good, "done", 10_000)
    assert %{processed: 1} = EchoMQ.Worker.counts(worker)
  end

  both "a sweep whose read of the parents fails says so and goes on", ctx do
    # A parent waiting since 1970: the sweep is due.
    {:ok, _} = Redis.query(ctx.conn, ["ZADD", Keyspace.queue_key(ctx.queue, "waiting"), "1", Id.mint()])
    # A connection that refuses the sweep's own read (one ZRANGE alone; the
    # first look, TIME and ZRANGE, goes in a pipeline).
    conn = refusing(ctx.server, "ZRANGE")
    state = %{conn: conn, via: ctx.via, queue: ctx.queue}

    log =
      ExUnit.CaptureLog.capture_log(fn ->
        assert EchoMQ.Upkeep.Flows.sweep_when_due(state, 0) == :ok
      end)

    assert log =~ "the sweep of #{ctx.queue} could not read its parents"
    assert log =~ "refused by the test"
  end

  both "claims that keep failing are said once, and their end once", ctx do
    pending = Keyspace.queue_key(ctx.queue, "pending")
    {:ok, _} = Redis.query(ctx.conn, ["SET", pending, "in the way"])

    log =
      ExUnit.CaptureLog.capture_log([level: :info], fn ->
        sup = start_worker(ctx, idle_wait: 100, handler: fn _ -> :ok end)
        # Claims fail every 200 ms meanwhile (EMQTYPE): a second is about five.
        Process.sleep(1_000)
        {:ok, _} = Redis.query(ctx.conn, ["DEL", pending])
        id = enqueue(ctx, "after")
        wait_state(ctx, id, "done", 30_000)
        Supervisor.stop(sup, :normal, 60_000)
      end)

    failed = log |> String.split("claim on #{ctx.queue} failed") |> length()
    assert failed == 2, log
    assert log =~ "claim on #{ctx.queue} works again"
  end

  both "an upkeep that cannot reach Redis says so once, and its end once", ctx do
    state = %{
      conn: refusing(ctx.server, "PING"),
      via: ctx.via,
      queue: ctx.queue,
      max_attempts: 3,
      period: 250,
      noted_at: nil,
      warned: MapSet.new(),
      down: false
    }

    log =
      ExUnit.CaptureLog.capture_log([level: :info], fn ->
        state = Enum.reduce(1..5, state, fn _, state -> EchoMQ.Upkeep.once(state) end)
        assert state.down
        state = EchoMQ.Upkeep.once(%{state | conn: ctx.conn})
        refute state.down
      end)

    said = log |> String.split("the upkeep of #{ctx.queue} cannot reach Redis") |> length()
    assert said == 2, log
    assert log =~ "refused by the test"
    assert log =~ "the upkeep of #{ctx.queue} reaches Redis again"
  end

  # A connection to the server that answers an error to each command alone
  # (not in a pipeline) that begins with `verb`.
  defp refusing(server, verb) do
    real = EchoMQ.Test.Server.connect(server)

    spawn_link(fn ->
      Stream.repeatedly(fn ->
        receive do
          {:"$gen_call", from, {:request, words} = request} ->
            refused = String.contains?(IO.iodata_to_binary(words), "\r\n" <> verb <> "\r\n")

            GenServer.reply(
              from,
              if(refused, do: {:error, "ERR refused by the test"}, else: :gen_server.call(real, request))
            )

          {:"$gen_call", from, request} ->
            GenServer.reply(from, :gen_server.call(real, request))
        end
      end)
      |> Stream.run()
    end)
  end
end
