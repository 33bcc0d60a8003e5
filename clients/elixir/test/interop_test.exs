defmodule EchoMQ.InteropTest do
  @moduledoc """
  Interop with the Rust speaker, both ways, on Lua and on Native: Elixir
  enqueues and `emq work` (the Rust worker, running a command per job)
  runs the jobs; `emq enqueue` enqueues and an `EchoMQ.Worker` runs them.
  Results read the same from both sides (`emq result`, `emq inspect`,
  `EchoMQ.Jobs`), each job's events in the queue's log are the same, and
  a stale token from either side is refused with `EMQFENCE`.
  """
  use ExUnit.Case, async: true
  use EchoMQ.Test.Executors

  alias EchoMQ.{Id, Jobs, Keyspace, Redis}
  alias EchoMQ.Test.Server

  @trace "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

  defp env(ctx), do: [{"ECHOMQ_URL", Server.url(ctx.server)}, {"ECHOMQ_VIA", "#{ctx.kind}"}]

  defp emq(ctx, args, extra_env \\ []) do
    System.cmd(Server.emq_path(), args, env: env(ctx) ++ extra_env, stderr_to_stdout: true)
  end

  # The command `emq work` runs per job: it checks it read the whole payload,
  # reports progress with `emq progress`, fails on the payload `fail`.
  defp job_script(ctx) do
    path = Path.join(System.tmp_dir!(), "echomq-ex-job-#{System.unique_integer([:positive])}.sh")

    File.write!(path, """
    #!/bin/sh
    payload=$(cat)
    [ "${#payload}" = "$ECHOMQ_PAYLOAD_BYTES" ] || exit 3
    if [ "$payload" = fail ]; then echo "it went wrong" >&2; exit 1; fi
    #{Server.emq_path()} progress 42 || exit 4
    printf 'ran %s with %s' "$payload" "$TRACEPARENT"
    """)

    File.chmod!(path, 0o755)
    on_exit(fn -> File.rm(path) end)
    _ = ctx
    path
  end

  # `emq work` in the background, stopped by SIGTERM at the test's end.
  defp emq_work(ctx, script) do
    port =
      Port.open({:spawn_executable, Server.emq_path()}, [
        :exit_status,
        :binary,
        :stderr_to_stdout,
        args: ["work", ctx.queue, "--result", "--", script],
        env: Enum.map(env(ctx), fn {k, v} -> {to_charlist(k), to_charlist(v)} end)
      ])

    {:os_pid, os_pid} = Port.info(port, :os_pid)
    on_exit(fn -> System.cmd("kill", ["-TERM", "#{os_pid}"], stderr_to_stdout: true) end)
    {port, os_pid}
  end

  defp stop_emq_work({port, os_pid}) do
    System.cmd("kill", ["-TERM", "#{os_pid}"])

    receive do
      {^port, {:exit_status, status}} -> status
    after
      60_000 -> flunk("emq work did not stop within 60 s")
    end
  end

  defp wait_done(ctx, id, state \\ "done") do
    eventually(
      fn -> match?({:ok, %{state: ^state}}, Jobs.inspect(ctx.conn, ctx.queue, id, via: ctx.via)) end,
      60_000,
      "job #{id} #{state}"
    )

    {:ok, info} = Jobs.inspect(ctx.conn, ctx.queue, id, via: ctx.via)
    info
  end

  # The events the queue's log holds for one job, in order.
  defp events(ctx, id) do
    {:ok, entries} = Redis.query(ctx.conn, ["XRANGE", Keyspace.queue_key(ctx.queue, "events"), "-", "+"])

    for [_, fields] <- entries,
        found = fields |> Enum.chunk_every(2) |> Map.new(fn [k, v] -> {k, v} end),
        found["id"] == id,
        do: found["event"]
  end

  both "Elixir enqueues and emq work runs the jobs", ctx do
    ids =
      for n <- 1..4 do
        id = Id.mint()
        headers = %{"tenant" => "acme", "traceparent" => @trace}

        {:ok, :enqueued} =
          Jobs.enqueue(ctx.conn, ctx.queue, id, "job #{n}", via: ctx.via, headers: headers, attempts: 3)

        id
      end

    failing = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, failing, "fail", via: ctx.via, attempts: 1)
    worker = emq_work(ctx, job_script(ctx))

    for {id, n} <- Enum.with_index(ids, 1) do
      done = wait_done(ctx, id)
      assert done.attempts == 1 and done.progress == "42"
      assert done.result == "ran job #{n} with #{@trace}"
      assert {result, 0} = emq(ctx, ["result", id, "--queue", ctx.queue])
      assert result == done.result
      {shown, 0} = emq(ctx, ["inspect", id, "--queue", ctx.queue])
      assert shown =~ "state     done" and shown =~ "progress  42" and shown =~ "header    tenant: acme"
      assert events(ctx, id) == ["enqueued", "active", "progress", "completed"]
    end

    dead = wait_done(ctx, failing, "dead")
    assert String.ends_with?(dead.error, "it went wrong")
    assert events(ctx, failing) == ["enqueued", "active", "dead"]
    assert stop_emq_work(worker) == 0
  end

  both "emq enqueues and an Elixir worker runs the jobs", ctx do
    ids =
      for n <- 1..4 do
        args = ["enqueue", ctx.queue, "{\"n\":#{n}}", "--header", "tenant=acme", "--header", "traceparent=#{@trace}"]
        {out, 0} = emq(ctx, args ++ ["--attempts", "2", "--timeout", "30s"])
        String.trim(out)
      end

    {out, 0} = emq(ctx, ["enqueue", ctx.queue, "fail", "--attempts", "1"])
    failing = String.trim(out)
    test = self()

    handler = fn job ->
      if job.payload == "fail", do: raise("elixir says no")
      send(test, {:seen, job.id, job.headers, job.policy, EchoMQ.Job.traceparent(job)})
      :ok = EchoMQ.Job.progress(job, "half way")
      {:ok, "elixir ran " <> job.payload}
    end

    opts = [queue: ctx.queue, redis: Server.redis(ctx.server), handler: handler, concurrency: 4]
    {:ok, sup} = Supervisor.start_link([{EchoMQ.Worker, opts}], strategy: :one_for_one)

    for id <- ids do
      done = wait_done(ctx, id)
      assert_received {:seen, ^id, %{"tenant" => "acme"}, %EchoMQ.Policy{attempts: 2, timeout: 30_000}, @trace}
      assert {result, 0} = emq(ctx, ["result", id, "--queue", ctx.queue])
      assert result == done.result and String.starts_with?(result, "elixir ran {\"n\":")
      {shown, 0} = emq(ctx, ["inspect", id, "--queue", ctx.queue])
      assert shown =~ "state     done" and shown =~ "progress  half way"
      assert events(ctx, id) == ["enqueued", "active", "progress", "completed"]
    end

    # emq reads the Elixir worker's entry in the worker registry, and its queue in the queue registry.
    {workers, 0} = emq(ctx, ["workers"])
    assert workers =~ ~r/:#{System.pid()}:\S+\s+\S+\s+#{System.pid()}\s+#{ctx.queue}\s+4\s/
    {queues, 0} = emq(ctx, ["queues"])
    assert queues =~ ctx.queue

    dead = wait_done(ctx, failing, "dead")
    assert dead.error =~ "** (RuntimeError) elixir says no"
    {shown, 0} = emq(ctx, ["inspect", failing, "--queue", ctx.queue])
    assert shown =~ "error     ** (RuntimeError) elixir says no"
    assert events(ctx, failing) == ["enqueued", "active", "dead"]
    :ok = Supervisor.stop(sup, :normal, 60_000)
  end

  both "schedules are shared with emq and their tick ids agree", ctx do
    {_, 0} = emq(ctx, ["schedule", "add", "--every", "1s", ctx.queue, "from-rust", "rust tick"])
    assert Jobs.schedule_every(ctx.conn, ctx.queue, "from-elixir", 1000, "elixir tick", via: ctx.via) == {:ok, :added}
    {listed, 0} = emq(ctx, ["schedule", "list", ctx.queue])
    assert listed =~ "from-rust" and listed =~ "from-elixir"

    test = self()
    handler = fn job -> send(test, {:ran, job.id, job.payload}) && :ok end
    opts = [queue: ctx.queue, redis: Server.redis(ctx.server), via: ctx.via, handler: handler, upkeep: 50]
    {:ok, sup} = Supervisor.start_link([{EchoMQ.Worker, opts}], strategy: :one_for_one)

    # Each schedule's ticks fire as jobs whose ids are §11.6's tick ids.
    for {name, payload} <- [{"from-rust", "rust tick"}, {"from-elixir", "elixir tick"}] do
      assert_receive {:ran, id, ^payload}, 30_000
      <<"JOB_", time::binary-size(10), _::binary>> = id
      assert id == EchoMQ.Schedule.tick_id(ctx.queue, name, crockford(time))
    end

    :ok = Supervisor.stop(sup, :normal, 60_000)
  end

  defp crockford(text) do
    for <<c <- text>>, reduce: 0, do: (n -> n * 32 + Enum.find_index(~c"0123456789ABCDEFGHJKMNPQRSTVWXYZ", &(&1 == c)))
  end

  both "a stale Elixir token is fenced after a Rust worker took the job", ctx do
    id = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, id, "taken", via: ctx.via)
    # A 1 ms lease: it runs out at once; emq work's upkeep reaps it and runs the job.
    {:ok, [[^id, 1, "taken"]]} = ctx.via.eval(ctx.conn, :claim, Keyspace.keys(:claim, ctx.queue), ["1", "COUNT", "1"])
    worker = emq_work(ctx, job_script(ctx))
    done = wait_done(ctx, id)
    assert done.attempts == 2 and done.result == "ran taken with "

    stale = ctx.via.eval(ctx.conn, :ack, Keyspace.keys(:ack, ctx.queue, job: id), [id, "1", "RESULT", "stale"])
    assert stale == {:error, {:server, "EMQFENCE token does not hold the lease"}}
    job = %EchoMQ.Job{queue: ctx.queue, id: id, token: 1, payload: "taken", conn: ctx.conn, via: ctx.via}
    assert EchoMQ.Job.progress(job, "stale") == {:error, :fence}
    assert Jobs.result(ctx.conn, ctx.queue, id, via: ctx.via) == {:ok, "ran taken with "}
    assert stop_emq_work(worker) == 0
  end

  both "a stale Rust token is fenced while Elixir holds the job", ctx do
    {out, 0} = emq(ctx, ["enqueue", ctx.queue, "held"])
    id = String.trim(out)
    claim = Keyspace.keys(:claim, ctx.queue)
    {:ok, [[^id, 1, "held"]]} = ctx.via.eval(ctx.conn, :claim, claim, ["1", "COUNT", "1"])

    eventually(fn ->
      {:ok, [requeued, _]} = ctx.via.eval(ctx.conn, :reap, Keyspace.keys(:reap, ctx.queue), ["5", "LIMIT", "10"])
      requeued == 1
    end)

    {:ok, [[^id, 2, "held"]]} = ctx.via.eval(ctx.conn, :claim, claim, ["60000", "COUNT", "1"])

    progress = fn token ->
      emq(ctx, ["progress", "at token #{token}"], [
        {"ECHOMQ_QUEUE", ctx.queue},
        {"ECHOMQ_JOB_ID", id},
        {"ECHOMQ_JOB_TOKEN", "#{token}"}
      ])
    end

    {said, status} = progress.(1)
    assert status == 5 and said =~ "EMQFENCE"
    assert {:ok, %{progress: nil}} = Jobs.inspect(ctx.conn, ctx.queue, id, via: ctx.via)
    assert {_, 0} = progress.(2)
    assert {:ok, %{progress: "at token 2"}} = Jobs.inspect(ctx.conn, ctx.queue, id, via: ctx.via)
  end
end
