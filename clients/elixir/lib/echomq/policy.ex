defmodule EchoMQ.Policy do
  @moduledoc """
  A job's own policy (PROTOCOL.md §7.2), as `<q>policy` keeps it and CLAIM
  hands it out: `ATTEMPTS 3 BACKOFF_EXP 1000 TIMEOUT 30000`. The server
  enforces ATTEMPTS and the back-off; the worker enforces TIMEOUT.
  """

  defstruct [:attempts, :backoff, :backoff_exp, :timeout]

  @type t :: %__MODULE__{
          attempts: non_neg_integer | nil,
          backoff: non_neg_integer | nil,
          backoff_exp: non_neg_integer | nil,
          timeout: pos_integer | nil
        }

  @names %{"ATTEMPTS" => :attempts, "BACKOFF" => :backoff, "BACKOFF_EXP" => :backoff_exp, "TIMEOUT" => :timeout}

  @doc "The policy a text reads as, or `nil` for none or one that does not read (the server refuses those)."
  @spec parse(binary | nil) :: t | nil
  def parse(nil), do: nil

  def parse(text) when is_binary(text) do
    text |> String.split(" ") |> pairs(%__MODULE__{})
  end

  defp pairs([], policy), do: policy

  defp pairs([name, value | rest], policy) do
    with {:ok, field} <- Map.fetch(@names, String.upcase(name)),
         nil <- Map.fetch!(policy, field),
         true <- Regex.match?(~r/\A\d{1,15}\z/, value) do
      pairs(rest, Map.put(policy, field, String.to_integer(value)))
    else
      _ -> nil
    end
  end

  defp pairs(_odd, _policy), do: nil

  @doc "The policy's options for ENQUEUE (§7.2), from a keyword list's `attempts`, `backoff`, `backoff_exp`, `timeout`."
  @spec options(keyword) :: [binary]
  def options(opts) do
    alias EchoMQ.{Args, InvalidInput}

    if opts[:backoff] != nil and opts[:backoff_exp] != nil,
      do: raise(InvalidInput, "backoff and backoff_exp exclude each other")

    [
      {"ATTEMPTS", opts[:attempts], "MAX_ATTEMPTS"},
      {"BACKOFF", opts[:backoff], "DELAY_MS"},
      {"BACKOFF_EXP", opts[:backoff_exp], "DELAY_MS"},
      {"TIMEOUT", opts[:timeout], "TIMEOUT_MS"}
    ]
    |> Enum.flat_map(fn
      {_, nil, _} -> []
      {name, value, limit} -> [name, Args.integer(String.downcase(name), value, limit)]
    end)
  end
end
