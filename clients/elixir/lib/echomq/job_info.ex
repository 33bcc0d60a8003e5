defmodule EchoMQ.JobInfo do
  @moduledoc """
  A job as INSPECT reads it (PROTOCOL.md §7): the record's birth fields
  (`state`, `attempts`, the fencing token, and `payload`), the native
  stamps when the record has them (§3), and what is kept beside it: the
  last error, progress, result, policy and headers, and its group (1.7).
  """

  defstruct [
    :id,
    :state,
    :attempts,
    :payload,
    :enqueued_at,
    :updated_at,
    :error,
    :progress,
    :result,
    :policy,
    :group,
    headers: %{},
    fields: %{}
  ]

  @type t :: %__MODULE__{
          id: binary,
          state: binary,
          attempts: non_neg_integer | nil,
          payload: binary | nil,
          enqueued_at: integer | nil,
          updated_at: integer | nil,
          error: binary | nil,
          progress: binary | nil,
          result: binary | nil,
          policy: EchoMQ.Policy.t() | nil,
          group: binary | nil,
          headers: %{binary => binary},
          fields: %{binary => binary}
        }

  @doc "INSPECT's reply, `[record, error, progress, result, policy, headers]` and the group with its seventh key, read."
  @spec read(binary, list) :: t
  def read(id, [record, error, progress, result, policy, headers | rest]) do
    fields = record |> Enum.chunk_every(2) |> Map.new(fn [k, v] -> {k, v} end)

    %__MODULE__{
      id: id,
      state: fields["state"],
      attempts: number(fields["attempts"]),
      payload: fields["payload"],
      enqueued_at: number(fields["enqueued_at"]),
      updated_at: number(fields["updated_at"]),
      error: error,
      progress: progress,
      result: result,
      policy: EchoMQ.Policy.parse(policy),
      headers: headers(headers),
      group: List.first(rest),
      fields: fields
    }
  end

  defp number(nil), do: nil

  defp number(text) do
    case Integer.parse(text) do
      {n, ""} -> n
      _ -> nil
    end
  end

  @doc "Headers as §7.6 says speakers read them: a JSON object of strings, anything else none."
  @spec headers(binary | nil) :: %{binary => binary}
  def headers(nil), do: %{}

  def headers(json) do
    case :jiffy.decode(json, [:return_maps]) do
      found when is_map(found) -> if Enum.all?(found, fn {_, v} -> is_binary(v) end), do: found, else: %{}
      _ -> %{}
    end
  catch
    _, _ -> %{}
  end
end
