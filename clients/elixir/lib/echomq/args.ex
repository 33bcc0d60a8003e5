defmodule EchoMQ.Args do
  @moduledoc """
  Arguments checked against PROTOCOL.md §7's limits before anything is sent
  (DESIGN rule 6): a bad one raises `EchoMQ.InvalidInput` and the server
  never hears of it. Integers go as decimal text (§5).
  """

  alias EchoMQ.{InvalidInput, Protocol}

  @doc "`value` as decimal text, checked against limit `limit` of §11.1."
  @spec integer(binary, term, binary) :: binary
  def integer(what, value, limit) do
    {low, high} = Protocol.limit(limit)

    unless is_integer(value) and value >= low and value <= high,
      do: raise(InvalidInput, "#{what} must be an integer in #{low}..=#{high}, not #{inspect(value)}")

    Integer.to_string(value)
  end

  @doc "Bytes of at most the limit `limit` (a size of §11.1): a payload, a result, a progress value."
  @spec bytes(binary, term, binary) :: binary
  def bytes(what, value, limit \\ "MAX_PAYLOAD") do
    most = Protocol.size(limit)

    cond do
      not is_binary(value) -> raise InvalidInput, "a #{what} is a binary, not #{inspect(value)}"
      byte_size(value) > most -> raise InvalidInput, "the #{what} is #{byte_size(value)} bytes; at most #{most}"
      true -> value
    end
  end

  @doc "A job id as the server's kind gate takes it; `EMQKIND` is the server's to answer, so only its type is checked here."
  @spec id(term) :: binary
  def id(value) when is_binary(value), do: value
  def id(value), do: raise(InvalidInput, "a job id is a binary, not #{inspect(value)}")

  @doc """
  An error text for FAIL, at most `MAX_ERROR_TEXT` bytes (FAIL refuses a
  longer one; `<q>errors` keeps it whole). A longer one is cut as §7.5 cuts
  an event's: at the limit, then back while the first byte left out
  continues a UTF-8 character (`10xxxxxx`), at most three bytes. The bytes
  need not be UTF-8.
  """
  @spec error_text(binary) :: binary
  def error_text(text) do
    most = Protocol.size("MAX_ERROR_TEXT")
    if byte_size(text) <= most, do: text, else: binary_part(text, 0, cut(text, most, 3))
  end

  defp cut(text, at, back) do
    if back > 0 and :binary.at(text, at) in 0x80..0xBF, do: cut(text, at - 1, back - 1), else: at
  end

  @doc "Headers as a JSON object of strings (§7.6), at most 8192 bytes."
  @spec headers(term) :: binary
  def headers(headers) when is_map(headers) and map_size(headers) > 0 do
    unless Enum.all?(headers, fn {k, v} -> is_binary(k) and is_binary(v) end),
      do: raise(InvalidInput, "headers are a map of binaries to binaries, not #{inspect(headers)}")

    json = :jiffy.encode(headers)
    most = Protocol.size("MAX_HEADERS")

    if byte_size(json) > most,
      do: raise(InvalidInput, "the headers are #{byte_size(json)} bytes as JSON; at most #{most}")

    json
  end

  def headers(headers), do: raise(InvalidInput, "headers are a non-empty map of binaries, not #{inspect(headers)}")

  @doc "Only the options named in `allowed`: any other is refused, named."
  @spec only!(keyword, [atom]) :: keyword
  def only!(opts, allowed) do
    unless Keyword.keyword?(opts), do: raise(InvalidInput, "options are a keyword list, not #{inspect(opts)}")

    case Enum.reject(Keyword.keys(opts), &(&1 in allowed)) do
      [] -> opts
      unknown -> raise InvalidInput, "unknown option(s) #{inspect(unknown)}; this call takes #{inspect(allowed)}"
    end
  end
end
