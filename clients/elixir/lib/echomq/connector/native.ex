defmodule EchoMQ.Connector.Native do
  @moduledoc """
  The native connector: each transition as the module's command,
  `EMQ.<NAME> numkeys key… arg…` (PROTOCOL.md §8), the key count first, as
  `EVALSHA` takes it: nothing guesses where KEYS end. Same replies and
  error texts as the scripts; a native birth writes five fields (§3).
  """
  @behaviour EchoMQ.Connector

  alias EchoMQ.{Connector, Protocol, Redis}

  @impl true
  def kind, do: :native

  @impl true
  def eval(conn, transition, keys, args) do
    conn |> Redis.query(command(transition, keys, args)) |> Connector.typed(transition)
  end

  @impl true
  def eval_many(_conn, []), do: []

  def eval_many(conn, calls) do
    answers = Redis.pipeline(conn, Enum.map(calls, fn {t, k, a} -> command(t, k, a) end))
    Enum.zip_with(calls, answers, fn {t, _, _}, answer -> Connector.typed(answer, t) end)
  end

  @doc false
  def command(transition, keys, args) do
    [Protocol.transition(transition).command, Integer.to_string(length(keys)) | keys ++ args]
  end
end
