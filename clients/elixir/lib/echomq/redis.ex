defmodule EchoMQ.Redis do
  @moduledoc """
  The connection: Debian's eredis (`erlang-redis-client`), opened with the
  options a caller gives, and its answers in one shape: `{:ok, raw}`, a
  server's refusal `{:error, {:server, text}}`, a connection's failure
  `{:error, reason}`. No call here knows the protocol: `EchoMQ.Connector`
  does.
  """

  @typedoc "Where the server is: `host` (default `\"127.0.0.1\"`), `port` (6379), `database` (0), `password`."
  @type options :: keyword

  @doc "Open a connection, linked to the caller."
  @spec open(options) :: {:ok, pid} | {:error, term}
  def open(opts \\ []) do
    :eredis.start_link(
      host: to_charlist(Keyword.get(opts, :host, "127.0.0.1")),
      port: Keyword.get(opts, :port, 6379),
      database: Keyword.get(opts, :database, 0),
      password: to_charlist(Keyword.get(opts, :password, "")),
      reconnect_sleep: :no_reconnect,
      connect_timeout: Keyword.get(opts, :connect_timeout, 5_000)
    )
  end

  @doc "Close a connection."
  @spec close(pid) :: :ok
  def close(conn) do
    :eredis.stop(conn)
  catch
    :exit, _ -> :ok
  end

  @doc "One command; `timeout` in ms, longer than any block it asks the server for."
  @spec query(pid, [iodata], timeout) :: {:ok, term} | {:error, term}
  def query(conn, words, timeout \\ 5_000) do
    conn |> :eredis.q(words, timeout) |> answer()
  catch
    :exit, reason -> {:error, {:exit, reason}}
  end

  @doc "Many commands in one round trip: an answer each, in order."
  @spec pipeline(pid, [[iodata]], timeout) :: [{:ok, term} | {:error, term}]
  def pipeline(conn, commands, timeout \\ 15_000) do
    case :eredis.qp(conn, commands, timeout) do
      answers when is_list(answers) -> Enum.map(answers, &answer/1)
      failed -> List.duplicate(answer(failed), length(commands))
    end
  catch
    :exit, reason -> List.duplicate({:error, {:exit, reason}}, length(commands))
  end

  defp answer({:ok, raw}), do: {:ok, raw}
  defp answer({:error, text}) when is_binary(text), do: {:error, {:server, text}}
  defp answer({:error, reason}), do: {:error, reason}
end
