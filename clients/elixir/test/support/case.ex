defmodule EchoMQ.Test do
  @moduledoc """
  What the tests share: a unique queue name per test, waiting for a
  condition with a deadline (never a fixed sleep), and the keyspace of a
  queue, to show a refusal wrote nothing.
  """

  @doc "A queue name no other test uses."
  def unique_queue(prefix \\ "ex"), do: "#{prefix}-#{System.unique_integer([:positive])}"

  @doc "Wait until `check.()` answers something truthy, up to `timeout` ms; that answer."
  def eventually(check, timeout \\ 30_000, what \\ "the condition") do
    deadline = System.monotonic_time(:millisecond) + timeout
    wait(check, deadline, 5, what, timeout)
  end

  defp wait(check, deadline, delay, what, timeout) do
    case check.() do
      found when found not in [nil, false] ->
        found

      _ ->
        if System.monotonic_time(:millisecond) > deadline,
          do: raise(ExUnit.AssertionError, message: "not within #{timeout} ms: #{what}")

        Process.sleep(delay)
        wait(check, deadline, min(delay * 2, 200), what, timeout)
    end
  end

  @doc "Every key of `queue` with its type and content."
  def keyspace(conn, queue) do
    {:ok, keys} = EchoMQ.Redis.query(conn, ["KEYS", "emq:{#{queue}}:*"])

    Map.new(keys, fn key ->
      {:ok, type} = EchoMQ.Redis.query(conn, ["TYPE", key])
      {:ok, dump} = EchoMQ.Redis.query(conn, ["DUMP", key])
      {key, {type, dump}}
    end)
  end

  @doc "How many transitions the server has run: EVALSHA calls and EMQ.* commands (EMQ.VERSION aside)."
  def transitions_sent(conn) do
    {:ok, info} = EchoMQ.Redis.query(conn, ["INFO", "commandstats"])

    for line <- String.split(info, "\r\n"),
        [_, name, calls] <- [Regex.run(~r/^cmdstat_([^:]+):calls=(\d+)/, line)],
        String.starts_with?(name, "evalsha") or (String.starts_with?(name, "emq.") and name != "emq.version"),
        reduce: 0 do
      sum -> sum + String.to_integer(calls)
    end
  end

  @doc "The connector a kind of server speaks."
  def via(:lua), do: EchoMQ.Connector
  def via(:native), do: EchoMQ.Connector.Native
end

defmodule EchoMQ.Test.Executors do
  @moduledoc """
  `use EchoMQ.Test.Executors` in a test module: a server per executor for
  the module (Lua's without the module, Native's with it), and for each
  test tagged `kind: :lua` or `kind: :native` a connection (`conn`), the
  connector (`via`, detected as a user's host detects it), the `server`
  and a unique `queue`. `both "name", ctx do … end` defines the test once
  per executor.
  """

  defmacro __using__(_) do
    quote do
      import EchoMQ.Test.Executors, only: [both: 3]
      import EchoMQ.Test

      setup_all do
        EchoMQ.Test.Server.module_path()
        servers = %{lua: EchoMQ.Test.Server.start(:lua), native: EchoMQ.Test.Server.start(:native)}
        on_exit(fn -> Enum.each(servers, fn {_, s} -> EchoMQ.Test.Server.stop(s) end) end)
        %{servers: servers}
      end

      setup %{servers: servers} = ctx do
        kind = Map.get(ctx, :kind, :lua)
        server = servers[kind]
        conn = EchoMQ.Test.Server.connect(server)
        {:ok, via} = EchoMQ.Connector.detect(conn)
        ^via = EchoMQ.Test.via(kind)
        %{conn: conn, via: via, server: server, kind: kind, queue: EchoMQ.Test.unique_queue()}
      end
    end
  end

  @doc "A test, once on Lua and once on Native."
  defmacro both(name, ctx, do: body) do
    for kind <- [:lua, :native] do
      quote do
        @tag kind: unquote(kind)
        test(unquote("#{name} (#{kind})"), unquote(ctx), do: unquote(body))
      end
    end
  end
end
