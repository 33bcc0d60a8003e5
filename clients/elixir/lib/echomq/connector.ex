defmodule EchoMQ.Connector do
  @moduledoc """
  The dispatch every call is carried by, never inspected: a transition in,
  its reply out. This module is the behaviour and its default, Lua: each
  transition's expanded script by `EVALSHA` (`EVALSHA_RO` for the reads),
  loaded as PROTOCOL.md §11.1 says (`SCRIPT LOAD`, the SHA1s checked) and
  loaded again on `NOSCRIPT` (a restarted or flushed server), then the call
  repeated. `EchoMQ.Connector.Native` sends the module's `EMQ.*` commands;
  `detect/1` picks as the other hosts do.

  A connection (`conn`) is an eredis client pid (`EchoMQ.Redis.open/1`).
  Replies are typed by `EchoMQ.Reply`; a refusal is `{:error, {:server,
  "EMQ<NAME> text"}}`; a connection's failure `{:error, reason}`.
  """

  alias EchoMQ.{Protocol, Redis, Reply}

  @typedoc "An eredis connection."
  @type conn :: pid
  @typedoc "A transition's answer."
  @type answer :: {:ok, term} | {:error, {:server, binary}} | {:error, term}

  @doc "Run one transition with its KEYS and ARGV."
  @callback eval(conn, Protocol.transition(), [binary], [binary]) :: answer
  @doc "Run many in one round trip (a pipeline, not a transaction): an answer each."
  @callback eval_many(conn, [{Protocol.transition(), [binary], [binary]}]) :: [answer]
  @doc "Which executor: `:lua` or `:native`."
  @callback kind() :: :lua | :native

  @doc "Lua: the scripts by EVALSHA."
  def kind, do: :lua

  @doc "One transition by EVALSHA; on NOSCRIPT the script is loaded and the call sent again."
  def eval(conn, transition, keys, args) do
    words = command(transition, keys, args)

    case Redis.query(conn, words) do
      {:error, {:server, "NOSCRIPT" <> _}} ->
        with {:ok, _} <- Redis.query(conn, ["SCRIPT", "LOAD", Protocol.transition(transition).source]) do
          conn |> Redis.query(words) |> typed(transition)
        end

      answer ->
        typed(answer, transition)
    end
  end

  @doc "Many transitions in one pipeline; those answered NOSCRIPT are sent again once the scripts are loaded."
  def eval_many(_conn, []), do: []

  def eval_many(conn, calls) do
    answers = Redis.pipeline(conn, Enum.map(calls, fn {t, k, a} -> command(t, k, a) end))

    if Enum.any?(answers, &match?({:error, {:server, "NOSCRIPT" <> _}}, &1)) do
      _ = load(conn)

      Enum.zip_with(calls, answers, fn {t, k, a}, answer ->
        case answer do
          {:error, {:server, "NOSCRIPT" <> _}} -> conn |> Redis.query(command(t, k, a)) |> typed(t)
          answer -> typed(answer, t)
        end
      end)
    else
      Enum.zip_with(calls, answers, fn {t, _, _}, answer -> typed(answer, t) end)
    end
  end

  @doc "Load every script (`SCRIPT LOAD`) and check the server's SHA1s against ours."
  @spec load(conn) :: :ok | {:error, term}
  def load(conn) do
    scripts = Map.values(Protocol.transitions())
    answers = Redis.pipeline(conn, Enum.map(scripts, &["SCRIPT", "LOAD", &1.source]))

    Enum.zip(scripts, answers)
    |> Enum.find_value(:ok, fn
      {%{sha1: sha1}, {:ok, sha1}} -> nil
      {script, {:ok, other}} -> {:error, {:sha1, script.file, other, script.sha1}}
      {_, error} -> error
    end)
  end

  @doc """
  The connector this server supports, its version checked before anything
  is written: `EchoMQ.Connector.Native` when `EMQ.VERSION` answers this
  package's major (and a minor at least §11.1's `MODULE_MINOR`), `{:error, {:other_major, found,
  own}}` (or `:older_minor`) when it answers another; Lua, its scripts
  loaded, when the command is unknown or not allowed.
  """
  @spec detect(conn) :: {:ok, module} | {:error, term}
  def detect(conn) do
    {major, _minor} = Protocol.version()

    case Redis.query(conn, ["EMQ.VERSION"]) do
      {:ok, found} ->
        case Regex.run(~r/\A(\d{1,9})\.(\d{1,9})\z/, to_string(found)) do
          [_, m, n] ->
            cond do
              String.to_integer(m) != major ->
                {:error, {:other_major, found, Protocol.version_text()}}

              # The last minor that added a call it sends (§11.1's MODULE_MINOR).
              String.to_integer(n) < Protocol.size("MODULE_MINOR") ->
                {:error, {:older_minor, found, Protocol.version_text()}}

              true ->
                {:ok, EchoMQ.Connector.Native}
            end

          nil ->
            {:error, {:not_a_version, found}}
        end

      {:error, {:server, text}} ->
        if unknown?(text), do: lua(conn), else: {:error, {:server, text}}

      error ->
        error
    end
  end

  @doc """
  Whether this package may work `queue` (§2, §12): its `<q>config`'s
  `protocol` field absent (1.x) or of this major, `:ok`; else `{:error,
  {:other_major, found, own}}` (or `{:not_a_version, found}`), before
  anything is written. Every transition that reads `<q>config` refuses such
  a queue anyway (`EMQVERSION`); a worker asks once, at its start.
  """
  @spec check_queue(conn, binary) :: :ok | {:error, term}
  def check_queue(conn, queue) do
    {major, _} = Protocol.version()

    case Redis.query(conn, ["HGET", EchoMQ.Keyspace.queue_key(queue, "config"), "protocol"]) do
      {:ok, :undefined} ->
        :ok

      {:ok, found} ->
        case Regex.run(~r/\A(\d{1,9})\.(\d{1,9})\z/, found) do
          [_, m, _] ->
            if String.to_integer(m) == major, do: :ok, else: {:error, {:other_major, found, Protocol.version_text()}}

          nil ->
            {:error, {:not_a_version, found}}
        end

      {:error, {:server, "WRONGTYPE" <> _}} ->
        # Left to the transitions, which say what is wrong (EMQTYPE).
        :ok

      error ->
        error
    end
  end

  defp lua(conn) do
    with :ok <- load(conn), do: {:ok, __MODULE__}
  end

  defp unknown?(text) do
    down = String.downcase(text)
    String.contains?(down, "unknown command") or String.starts_with?(text, "NOPERM")
  end

  defp command(transition, keys, args) do
    script = Protocol.transition(transition)
    verb = if Protocol.read_only?(transition), do: "EVALSHA_RO", else: "EVALSHA"
    [verb, script.sha1, Integer.to_string(length(keys)) | keys ++ args]
  end

  @doc false
  def typed({:ok, raw}, transition), do: {:ok, Reply.read(transition, raw)}
  def typed(error, _transition), do: error
end
