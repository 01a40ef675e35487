/** The bounded `model` label: served names kept, anything else `other`, re-read lazily from the fleet. */
import { describe, expect, it } from 'vitest';
import { MAX_MODEL_LABELS, ModelLabels } from '../../../src/core/observability/model-labels.ts';

function fleetModels(initial: string[]) {
  let models = initial;
  let reads = 0;
  return {
    read: () => {
      reads++;
      return models;
    },
    set: (next: string[]) => {
      models = next;
    },
    reads: () => reads,
  };
}

describe('ModelLabels', () => {
  it('keeps a served model, names any other `other`, and leaves a request without a model empty', () => {
    const labels = new ModelLabels(fleetModels(['llama', 'qwen']).read);
    expect(labels.label('llama', 0)).toBe('llama');
    expect(labels.label('qwen', 0)).toBe('qwen');
    expect(labels.label('gpt-4o', 0)).toBe('other');
    expect(labels.label('llama\n"}', 0)).toBe('other');
    expect(labels.label(undefined, 0)).toBe('');
  });

  it('reads the fleet again on a miss at most once a second, and every 30 s regardless', () => {
    const fleet = fleetModels(['llama']);
    const labels = new ModelLabels(fleet.read);
    expect(labels.label('llama', 0)).toBe('llama');
    expect(fleet.reads()).toBe(1);
    fleet.set(['llama', 'lora-a']);
    // A client asking for unknown names costs one read a second, however many requests it sends.
    for (let t = 0; t < 1000; t += 10) expect(labels.label('lora-a', t)).toBe('other');
    expect(fleet.reads()).toBe(1);
    expect(labels.label('lora-a', 1000)).toBe('lora-a');
    expect(fleet.reads()).toBe(2);
    // Hits never read the fleet until the 30 s refresh, which drops a model no longer served.
    fleet.set(['lora-a']);
    expect(labels.label('llama', 30_999)).toBe('llama');
    expect(fleet.reads()).toBe(2);
    expect(labels.label('llama', 31_000)).toBe('other');
    expect(fleet.reads()).toBe(3);
  });

  it('bounds the names that keep their own series', () => {
    const many = Array.from({ length: MAX_MODEL_LABELS + 10 }, (_, i) => `lora-${i}`);
    const labels = new ModelLabels(() => many);
    expect(labels.label('lora-0', 0)).toBe('lora-0');
    expect(labels.label(`lora-${MAX_MODEL_LABELS - 1}`, 0)).toBe(`lora-${MAX_MODEL_LABELS - 1}`);
    expect(labels.label(`lora-${MAX_MODEL_LABELS}`, 0)).toBe('other');
  });

  it('takes a fleet behind RPC: warmed when a request starts, labelled once the answer is in', async () => {
    let answer: (models: string[]) => void = () => {};
    let reads = 0;
    const labels = new ModelLabels(() => {
      reads++;
      return new Promise<string[]>((resolve) => {
        answer = resolve;
      });
    });
    labels.warm('llama', 0);
    labels.warm('llama', 5); // one read in flight at a time
    expect(reads).toBe(1);
    expect(labels.label('llama', 10)).toBe('other');
    answer(['llama']);
    await Promise.resolve();
    await Promise.resolve();
    expect(labels.label('llama', 20)).toBe('llama');
    expect(reads).toBe(1);
  });

  it('survives a fleet that throws or rejects (the label is `other`, the request goes on)', async () => {
    const throwing = new ModelLabels(() => {
      throw new Error('down');
    });
    expect(throwing.label('llama', 0)).toBe('other');
    const rejecting = new ModelLabels(() => Promise.reject(new Error('rpc failed')));
    expect(rejecting.label('llama', 0)).toBe('other');
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(rejecting.label('llama', 2000)).toBe('other');
  });
});
