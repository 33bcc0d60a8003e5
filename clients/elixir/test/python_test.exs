defmodule EchoMQ.PythonTest do
  @moduledoc """
  Interop with the Python speaker (clients/python), both ways, on Lua and
  on Native: Python enqueues and an `EchoMQ.Worker` runs the jobs; Elixir
  enqueues and a Python worker runs them; each reads what the other wrote
  (results, progress, headers, tokens), and a stale Python token is
  refused after Elixir's worker took the job. The interpreter is
  `ECHOMQ_PYTHON` (scripts/test's venv, with the echomq package); without
  it these tests are excluded, and said so (test_helper.exs).
  """
  use ExUnit.Case, async: true
  use EchoMQ.Test.Executors

  alias EchoMQ.{Id, Jobs}
  alias EchoMQ.Test.Server

  @moduletag :python

  defp python(ctx, args) do
    peer = Path.join(__DIR__, "support/python_peer.py")
    env = [{"ECHOMQ_URL", Server.url(ctx.server)}, {"ECHOMQ_VIA", "#{ctx.kind}"}]
    {out, status} = System.cmd(System.fetch_env!("ECHOMQ_PYTHON"), [peer | args], env: env, stderr_to_stdout: true)
    assert status == 0, out
    out |> String.split("\n", trim: true) |> List.last() |> :jiffy.decode([:return_maps])
  end

  defp start_worker(ctx, handler) do
    opts = [queue: ctx.queue, redis: Server.redis(ctx.server), handler: handler, concurrency: 4]
    {:ok, sup} = Supervisor.start_link([{EchoMQ.Worker, opts}], strategy: :one_for_one)
    Process.unlink(sup)
    on_exit(fn -> if Process.alive?(sup), do: Supervisor.stop(sup, :normal, 60_000) end)
    sup
  end

  defp wait_done(ctx, id) do
    eventually(fn -> match?({:ok, %{state: "done"}}, Jobs.inspect(ctx.conn, ctx.queue, id, via: ctx.via)) end, 60_000)
    {:ok, info} = Jobs.inspect(ctx.conn, ctx.queue, id, via: ctx.via)
    info
  end

  both "Python enqueues and an Elixir worker runs the jobs", ctx do
    ids = python(ctx, ["enqueue", ctx.queue, "3"])

    start_worker(ctx, fn job ->
      :ok = EchoMQ.Job.progress(job, "ex half way")
      {:ok, "elixir ran #{job.payload} for #{job.headers["tenant"]} within #{job.policy.attempts}"}
    end)

    for {id, n} <- Enum.with_index(ids) do
      assert %{attempts: 1, result: result} = wait_done(ctx, id)
      assert result == "elixir ran py #{n} for acme within 2"
    end

    read = python(ctx, ["inspect", ctx.queue | ids])

    assert read ==
             for(
               n <- 0..2,
               do: ["done", 1, "elixir ran py #{n} for acme within 2", "ex half way", %{"tenant" => "acme"}]
             )
  end

  both "Elixir enqueues and a Python worker runs the jobs", ctx do
    ids =
      for n <- 1..3,
          do: Id.mint() |> tap(&({:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, &1, "ex #{n}", via: ctx.via)))

    assert python(ctx, ["work", ctx.queue | ids]) == for(n <- 1..3, do: ["done", 1, "python ran ex #{n}"])

    for {id, n} <- Enum.with_index(ids, 1) do
      assert {:ok, %{state: "done", progress: "py half way", result: result}} =
               Jobs.inspect(ctx.conn, ctx.queue, id, via: ctx.via)

      assert result == "python ran ex #{n}"
    end
  end

  both "a stale Python token is fenced after an Elixir worker took the job", ctx do
    id = Id.mint()
    {:ok, :enqueued} = Jobs.enqueue(ctx.conn, ctx.queue, id, "taken", via: ctx.via)
    assert python(ctx, ["claim", ctx.queue]) == [id, 1]
    start_worker(ctx, fn job -> {:ok, "elixir took " <> job.payload} end)
    assert %{attempts: 2, result: "elixir took taken"} = wait_done(ctx, id)
    assert python(ctx, ["ack", ctx.queue, id, "1"]) == "EMQFENCE"
    assert Jobs.result(ctx.conn, ctx.queue, id, via: ctx.via) == {:ok, "elixir took taken"}
  end
end
