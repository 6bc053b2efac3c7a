import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

/** One Kubernetes object as rendered: plain JSON. */
export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
};

/** The kustomization fields this renderer implements; any other field fails the render. */
const SUPPORTED = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'images', 'patches']);

/** Kinds that live outside namespaces among the ones the manifests use. */
const CLUSTER_SCOPED = new Set(['Namespace']);

interface Kustomization {
  namespace?: string;
  resources?: string[];
  images?: { name: string; newName?: string; newTag?: string }[];
  patches?: { path: string }[];
}

/**
 * Renders a kustomization the way `kubectl kustomize` does, for the subset the manifests use:
 * resources (files and directories), namespace, images, and patches given by path whose patch
 * changes maps and scalars only. For such a patch a strategic merge is exactly a JSON merge patch
 * (RFC 7386), which is what is applied here; a patch holding a list is refused, since a strategic
 * merge would merge that list by key where a merge patch replaces it.
 */
export function renderKustomization(dir: string): K8sObject[] {
  const file = path.join(dir, 'kustomization.yaml');
  const k = parseYamlFile(file)[0] as Kustomization & Record<string, unknown>;
  for (const field of Object.keys(k))
    if (!SUPPORTED.has(field)) throw new Error(`${file}: "${field}" is not supported by the test renderer`);

  const objects: K8sObject[] = [];
  for (const resource of k.resources ?? []) {
    const at = path.join(dir, resource);
    if (statSync(at).isDirectory()) objects.push(...renderKustomization(at));
    else objects.push(...(parseYamlFile(at) as K8sObject[]));
  }
  for (const { path: patchPath } of k.patches ?? []) {
    const docs = parseYamlFile(path.join(dir, patchPath)) as K8sObject[];
    if (docs.length !== 1) throw new Error(`${patchPath}: one patch per file`);
    const patch = docs[0]!;
    const listAt = findList(patch, '');
    if (listAt) throw new Error(`${patchPath}: a list at ${listAt}; the test renderer only merges maps`);
    const target = objects.findIndex(
      (o) =>
        o.apiVersion === patch.apiVersion && o.kind === patch.kind && o.metadata.name === patch.metadata.name,
    );
    if (target < 0) throw new Error(`${patchPath}: no ${patch.kind}/${patch.metadata.name} to patch`);
    objects[target] = mergePatch(objects[target], patch) as K8sObject;
  }
  for (const image of k.images ?? []) for (const o of objects) retag(o, image);
  if (k.namespace)
    for (const o of objects)
      if (!CLUSTER_SCOPED.has(o.kind)) o.metadata = { ...o.metadata, namespace: k.namespace };
  return objects;
}

/** Every YAML document of a file as JSON, empty documents left out. */
export function parseYamlFile(file: string): unknown[] {
  if (!existsSync(file)) throw new Error(`${file} does not exist`);
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
      return doc.toJS() as unknown;
    })
    .filter((doc) => doc !== null && doc !== undefined);
}

/** RFC 7386: objects merge key by key, null deletes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isMap(patch)) return patch;
  const out: Record<string, unknown> = isMap(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

function findList(value: unknown, at: string): string | undefined {
  if (Array.isArray(value)) return at || '/';
  if (!isMap(value)) return undefined;
  for (const [key, v] of Object.entries(value)) {
    const found = findList(v, `${at}/${key}`);
    if (found) return found;
  }
  return undefined;
}

/** kustomize's `images`: a container image named `name` (with or without a tag) gets the new name and tag. */
function retag(o: K8sObject, image: { name: string; newName?: string; newTag?: string }): void {
  for (const container of podContainers(o)) {
    const [name, tag] = splitImage(container.image);
    if (name !== image.name) continue;
    const newTag = image.newTag ?? tag;
    container.image = `${image.newName ?? name}${newTag ? `:${newTag}` : ''}`;
  }
}

function splitImage(image: string): [string, string | undefined] {
  const slash = image.lastIndexOf('/');
  const colon = image.lastIndexOf(':');
  return colon > slash ? [image.slice(0, colon), image.slice(colon + 1)] : [image, undefined];
}

/** The containers (init containers too) of a workload's pod template. */
export function podContainers(o: K8sObject): { name: string; image: string; [field: string]: unknown }[] {
  const spec = (o.spec as { template?: { spec?: Record<string, unknown> } } | undefined)?.template?.spec;
  if (!spec) return [];
  return [...((spec.initContainers as never[]) ?? []), ...((spec.containers as never[]) ?? [])];
}

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
